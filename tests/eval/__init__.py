"""The agent measured on tasks: the suite (tasks.yaml), the harness (`python -m tests.eval`) and its tests."""
