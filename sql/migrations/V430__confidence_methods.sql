-- Confidence methods as the studies define them (issue 17).
-- - 'self' and 'certainty' read the label and the confidence out of one answer: the request row keeps the
--   confidence it read (parsed_confidence), so a judgment stays derivable from the request it references.
-- - A regeneration (an answer that did not read, asked again) is sent with other parameters than the first attempt
--   (a new seed, at the method's sampling temperature or 0.7): attempt_params records every attempt's.
-- - LogP keeps the whole four-way label distribution, which labels the top log-probabilities missed, the
--   probability mass the four labels covered, and the answer token whose log-probabilities were read.

alter table llm_requests add column if not exists parsed_confidence double;  -- 'self', 'certainty': the confidence read
alter table llm_requests add column if not exists attempt_params json;       -- every attempt's parameters, in order

alter table llm_request_history add column if not exists parsed_confidence double;  -- as llm_requests.parsed_confidence
alter table llm_request_history add column if not exists attempt_params json;       -- as llm_requests.attempt_params

alter table judgments add column if not exists label_dist double[];          -- logprob: p(0), p(1), p(2), p(3)
alter table judgments add column if not exists p_label double;               -- logprob: p of the parsed label
alter table judgments add column if not exists missing_labels integer[];     -- logprob: labels not in the top tokens
alter table judgments add column if not exists label_mass double;            -- logprob: sum of exp(logprob) of the label tokens
alter table judgments add column if not exists label_token_index integer;    -- logprob: index of the answer token read
