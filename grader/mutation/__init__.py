"""Mutation testing of the lessons' reference solutions (scripts/mutate; README.md here)."""
