"""The client side: one streaming request and its timing marks (``streaming``), its failure
classes (``failures``), the body reader on the event loop (``reader``), the client's own health
(``health``), the check of the target before any load (``preflight``), and the HTTP stack's
private internals in one adapter (``http_adapter``)."""
