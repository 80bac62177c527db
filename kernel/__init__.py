"""The kernel: shared building blocks below every domain app (DESIGN.md section 2).

Modules here import Django and the standard library, never a domain app (coordinators,
workflows, batches, bundles, operations, datasets, xcommands, oozieapi, statusservice):
every app may import the kernel, the kernel imports none of them.
"""
