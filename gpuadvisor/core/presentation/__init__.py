"""How results are shown: the report content and the JSON form of results."""
