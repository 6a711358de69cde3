"""Whether to re-cluster: clustering metrics over file bounds and the re-clustering decision."""
