"""Bundles: groups of coordinators managed as one."""
