"""Files in and out of the core: scenarios, user catalogs, catalog exchange, price lists, HF configs, measurements."""
