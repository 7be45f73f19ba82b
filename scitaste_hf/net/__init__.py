"""HTTP helpers every layer above shares: retries (:mod:`.retry`), bounded reads (:mod:`.bounded`), the Hub's
timeouts and errors (:mod:`.hub`), the Space stores' Hub copy (:mod:`.hub_copy`), the Space's visitor guards
(:mod:`.guard`) and the one TLS context of the process's HTTP clients (:mod:`.tls`). Nothing here knows the
benchmark's facts beyond :mod:`scitaste_hf.errors`."""
