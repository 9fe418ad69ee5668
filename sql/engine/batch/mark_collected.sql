-- A batch whose files are collected: its requests without an answer line may be submitted again.
update llm_batches set collected_at = $collected_at, updated_at = $collected_at
where batch_id = $batch_id
