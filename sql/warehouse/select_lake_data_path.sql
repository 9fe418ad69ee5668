-- Where the attached DuckLake warehouse keeps its Parquet files (the only directory its analysts' connections read).
select data_path from ducklake_settings('lake')
