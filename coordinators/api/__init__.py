"""The native REST API of coordinators (serializers, filters, views, urls)."""
