"""The native REST API of workflow jobs (`/api/v1/workflows/`): list, detail with nodes, submit, verbs."""
