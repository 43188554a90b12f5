"""The fixture repositories are data for the report tests, never test modules of this project."""

collect_ignore_glob = ["*/*"]
