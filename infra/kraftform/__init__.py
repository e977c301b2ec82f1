"""kraftform: declarative infrastructure as code for Apache Kafka (KRaft) and its Spark consumers."""

from kraftform.errors import KraftformError, Location, PlanRefusedError, Problem, SpecError, UsageError

__all__ = ["KraftformError", "Location", "PlanRefusedError", "Problem", "SpecError", "UsageError"]
__version__ = "0.1.0"
