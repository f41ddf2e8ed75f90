"""What every app shares, below all of them (docs/architecture.md, layer 1): text (`common.text`), the
plain reads of the hot read path, the Redis guard, settings access, the request actor, the embedded
SQLite's planner statistics and the Server-Timing record. It imports no app; configuration stays in
`config/`."""
