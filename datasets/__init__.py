"""Datasets: the pure time line, URI templates, availability checks and events."""
