"""Tooling that runs the product from outside: benchmarks (`manage.py bench`) and failure drills (`manage.py chaos`).

It lives beside the product, not in it: no product module imports it, and it is not part of
the installed distribution (pyproject's package list leaves it out). In a checkout, the
settings add it as an app when it is present, so its two management commands work as
documented (docs/benchmarks.md, docs/failure-drills.md).
"""
