"""Reading the two persona-construction answers: the Step 1 keywords and the Step 2 instruction.

Models wrap both in prose and markdown. The rules (docs/personas.md, "Reading the answers"):

Keywords (Step 1). The list items of the answer: lines that start with a number, a bullet (`-`, `*`, `•`) or, when
the answer has no such lines, the comma-separated words of the answer's longest line. Of each item, the markdown
emphasis goes and so does any gloss after the first `:`, ` - ` or ` (`. Empty and over-long items (more than five
words: a sentence, not a keyword) are dropped; duplicates (case-insensitive) too. No keyword: unreadable.

Instruction (Step 2), in this order:
1. a fenced code block (```) holds the prompt: the longest one;
2. else, if a line labels the prompt (`Prompt:`, `**Prompt:**`, `### Prompt`, `Here is the prompt:`...), the text
   after that line; else the whole answer;
3. of that, a preface paragraph is dropped (the first paragraph, when it ends with `:` or opens with Sure,
   Certainly, Of course, Here is/Here's), and so are afterword paragraphs (from the first one after the prompt
   that opens with This prompt, Note, Feel free, By following, I hope, Remember, With this prompt);
4. markdown goes: horizontal rules, heading marks, blockquote marks, bold/italic markers, one pair of quotes
   around the whole; blank-line runs become one blank line.
Fewer than 10 words left: unreadable (the engine regenerates, then records the failure).
The raw answers are kept beside what was read (persona_set_builds).
"""

from __future__ import annotations

import re

from tasks.engine.spec import ParsedValue

MIN_INSTRUCTION_WORDS = 10
MAX_KEYWORD_WORDS = 5

FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•+])\s+(.+)$")
GLOSS = re.compile(r"\s*(?::|\s-\s|\s–\s|\s—\s|\().*$")
LABEL = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*|__)?\s*(?:here(?:'s| is)\s+(?:the|a|your)\s+)?(?:llm\s+|system\s+)?"
    r"(?:prompt|instructions?)\s*(?:for[^:]*)?:?\s*(?:\*\*|__)?\s*:?\s*$",
    re.I,
)
PREFACE = re.compile(r"^(?:sure|certainly|of course|absolutely|here(?:'s| is| are))\b", re.I)
AFTERWORD = re.compile(
    r"^(?:\*\*)?(?:this prompt|note\b|feel free|by following|i hope|remember\b|with this prompt|this instruction)",
    re.I,
)
RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")  # a markdown horizontal rule
EMPHASIS = re.compile(r"(\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w))")
QUOTES = {'"': '"', "“": "”", "'": "'"}


def parse_keywords(text: str) -> ParsedValue:
    """The keywords of a Step 1 answer, joined with ", " (Step 2's {personality_keywords})."""
    lines = [line for line in text.splitlines() if line.strip()]
    items = [m.group(1) for m in (LIST_ITEM.match(line) for line in lines) if m]
    if not items and lines:
        items = max(lines, key=len).split(",")
    keywords: list[str] = []
    for item in items:
        word = GLOSS.sub("", EMPHASIS.sub("", item)).strip(" .;\"'“”")
        if word and len(word.split()) <= MAX_KEYWORD_WORDS and word.lower() not in {k.lower() for k in keywords}:
            keywords.append(word)
    if not keywords:
        return ParsedValue(None, False, "no keywords found (no list items, no comma-separated line)")
    return ParsedValue(", ".join(keywords), True, f"{len(keywords)} keywords")


def parse_instruction(text: str) -> ParsedValue:
    """The instruction of a Step 2 answer, by the rule in the module docstring."""
    fenced = FENCE.findall(text)
    body = max(fenced, key=len) if fenced else trim_prose(after_label(text))
    instruction = unquote(clean_markdown(body))
    n_words = len(instruction.split())
    if n_words < MIN_INSTRUCTION_WORDS:
        return ParsedValue(None, False, f"instruction has {n_words} words, fewer than {MIN_INSTRUCTION_WORDS}")
    return ParsedValue(instruction, True, f"{n_words} words")


def after_label(text: str) -> str:
    """The text after the first line that labels the prompt (the whole text if none does)."""
    lines = text.strip().splitlines()
    for index, line in enumerate(lines):
        if LABEL.match(line) and "\n".join(lines[index + 1 :]).strip():
            return "\n".join(lines[index + 1 :])
    return text


def trim_prose(text: str) -> str:
    """Without a preface paragraph and the afterword paragraphs."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    if len(paragraphs) > 1 and (paragraphs[0].rstrip("*").endswith(":") or PREFACE.match(paragraphs[0])):
        paragraphs = paragraphs[1:]
    for index, paragraph in enumerate(paragraphs[1:], start=1):
        if AFTERWORD.match(paragraph.lstrip("#> ")):
            paragraphs = paragraphs[:index]
            break
    return "\n\n".join(paragraphs)


def clean_markdown(text: str) -> str:
    """Heading and blockquote marks, emphasis markers and blank-line runs gone; lines kept."""
    lines = []
    for line in text.strip().splitlines():
        if RULE.match(line):
            continue
        line = re.sub(r"^\s*(?:#+\s+|>\s?)", "", line)
        lines.append(EMPHASIS.sub("", line).rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def unquote(text: str) -> str:
    """Without one pair of quotes around the whole text."""
    if len(text) > 1 and QUOTES.get(text[0]) == text[-1] and text[0] not in text[1:-1]:
        return text[1:-1].strip()
    return text
