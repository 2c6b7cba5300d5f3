"""One module per queue library that `python -m bench.compare` measures; each runs in its
own interpreter as ``python -m bench.peers.NAME --out FILE ...`` (the peers in the peers'
virtualenv, anole_jobs in the project's) and measures through `bench.peers.harness`."""
