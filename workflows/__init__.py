"""Workflow jobs: what a coordinator action launches (`-W` ids), run node by node under leases."""
