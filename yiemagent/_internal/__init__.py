"""Private helpers shared by the packages above; nothing here is public API.

Argument checks (``checks``), deadlines (``deadlines``), fork safety (``fork``), the cuttable HTTP session
(``http``), depth-bounded JSON decoding (``jsonload``), retry policies (``retry``), secrets kept out of text
(``secrets``), versioned token rows (``versioned_tokens``) and the old import paths of moved modules (``moved``).
"""
