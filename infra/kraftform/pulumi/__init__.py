"""The Pulumi side of kraftform: dynamic providers over the same planner and applier as the CLI."""
