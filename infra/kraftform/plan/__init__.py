"""Plans: typed changes with safety classes, computed purely from a current and a desired state."""

from kraftform.plan.changes import Action, Change, Kind, Plan, Safety
from kraftform.plan.diff import Ownership, diff_states
from kraftform.plan.specdiff import diff_specsets
from kraftform.plan.state import ClusterState, TopicState, UserState, state_of

__all__ = ["Action", "Change", "ClusterState", "Kind", "Ownership", "Plan", "Safety", "TopicState",
           "UserState", "diff_specsets", "diff_states", "state_of"]
