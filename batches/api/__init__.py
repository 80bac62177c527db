"""The native REST API of batches (serializers, filters, views, urls)."""
