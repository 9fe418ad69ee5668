"""Prompt files live in their stage's folder (tasks/<stage>/prompts/); moving them kept every run's identity.

A run stores what it was asked with: the priming batch prompt's sha256 of the whole file, the fuser's and the
recognize prompts' sha256 of the template, pairwise the template texts, every request the hash of its messages. The
values below were computed by the code before the move (peras/prompts/), so a resumed run asks nothing again."""

from __future__ import annotations

import pytest

from peras.prompting import load_prompt, prompt_hash
from tasks.fuse.prompt import fuser_prompt
from tasks.priming.prompt import batch_prompt
from tasks.recognize.prompt import load_recognize_prompt
from tests.prompt_files import FILES, FOLDERS, FORMAT_PROMPTS, prompt_file

pytestmark = pytest.mark.core


def test_the_stored_fingerprints_are_those_before_the_move():
    assert batch_prompt().fingerprint == "95fe4f7fd2bbe3f7f217681b77c324c2386d7bf2cd927aab4c67f6dd99ce506b"
    assert fuser_prompt().fingerprint == "588cb9db00d1b749"
    assert load_recognize_prompt("recognize_state").fingerprint == (
        "1c492a50f90f281edbe1307bb67168f2e1c60ebd82f2cf72051594fe7624e7ff"
    )
    assert load_recognize_prompt("recognize_trait").fingerprint == (
        "249534369e54c6a459b70c11def3d6b6fa5f8120e21bff41338d484032c2c0c2"
    )


def test_a_stage_prompt_is_read_by_path_and_renders_as_before():
    template = load_prompt(prompt_file("bfi2_item"))
    messages = [{"role": "user", "content": template.render(item="is talkative.")}]
    assert prompt_hash(messages) == "fdd824266a31215873ce3e27dfca3050971398fdf1d10c2f319aafaa3bccb0dd"


def test_each_folder_has_its_answer_shapes_and_the_foundation_only_shared_prompts():
    assert sorted(path.stem for path in FOLDERS[0].glob("*.toml")) == [
        "answers",
        "confidence",
        "label_cot",
        "label_nocot",
    ]
    assert all((folder / "answers.toml").is_file() for folder in FOLDERS)
    assert len(FILES) == 19 and len(FORMAT_PROMPTS) == 14  # recognize_evidence: read by recognize's wrapper
