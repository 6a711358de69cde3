"""The stats table: the footer reader, the one stats row schema, the store and the Delta log reader."""
