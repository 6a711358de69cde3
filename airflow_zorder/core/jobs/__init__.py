"""What the Spark jobs are asked to do: their options, file sizing and JVM options."""
