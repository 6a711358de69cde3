"""Where tables live: locations and filesystems, the crash-safe commit, the table lock, formats."""
