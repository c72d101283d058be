"""The history of a cluster's metadata, asked by path: change items, ``log``, ``diff``, the index.

Everything here is built on the change sets of engine/image/change_set.py: ``change_items``
(change_items.py) turns each record's change set into rows a person reads (one per leaf of the
tree), transactions handled once for everyone (transactions.py).
"""
