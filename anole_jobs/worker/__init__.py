"""The runtime: attempts (`executor`), cancellation, manual steps and (later) worker pools."""
