"""The Oozie Web Services API (/oozie/v1, /oozie/v2) for coordinator jobs, so Oozie clients work unchanged."""
