"""The contracts between processes: what one role writes and another reads. The loops meet only through
these (and canon); each module here depends on the standard library, pydantic and shared's library alone."""
