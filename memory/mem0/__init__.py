"""A Mem0-compatible REST surface (docs/mem0.md): the endpoints `mem0ai`'s MemoryClient calls,
as thin views over this app's services and selectors."""
