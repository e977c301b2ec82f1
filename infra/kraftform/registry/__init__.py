"""The schema registry: its REST client, and the reconciliation of the subjects the specs declare."""
