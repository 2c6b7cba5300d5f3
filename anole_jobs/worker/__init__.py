"""The runtime: one attempt (`executor`, `outcomes`), cancellation, the worker pools and their
drain (`queue`, `runner`), and manual steps (`step`)."""
