"""The native REST API of bundles (serializers, filters, views, urls)."""
