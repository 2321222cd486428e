"""Job specs and cluster profiles: typed model and the loader that checks them at the door."""
