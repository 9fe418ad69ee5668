"""What tests and benchmarks both run against, outside the installed package: the scripted OpenAI server
(`python -m support.fake_openai`), the Prefect server helper, a throwaway PostgreSQL, a forward proxy."""
