"""Pulumi entry point: thin wiring only, the package does the work (kraftform.pulumi.program).

Stack configuration (see Pulumi.dev.yaml and Pulumi.prod.yaml):
  kraftform:specsDir          spec directory (default: specs); relative paths start beside Pulumi.yaml
  kraftform:mode              docker (kraftform runs the cluster) or external (an existing cluster)
  kraftform:env               dev or prod: which `kraftform lint` rules the policy pack enforces
  kraftform:image             official (apache/kafka), local (kraftform/kafka, `kraftform images build`) or a name
  kraftform:adminPassword     secret, docker mode (optional: generated and kept in the state otherwise)
  kraftform:bootstrapServers, kraftform:username, kraftform:password (secret), kraftform:caPath: external mode
  kraftform:protect           protect topics and principals from deletion (default: true in prod, false in dev)
  kraftform:deployConsumers   run the consumers in containers here (default: true in docker mode, false external)
  kraftform:sparkImage        the consumers' image (default: the locally built kraftform/spark:<version>-<digest>)
  kraftform:allowStateReset   consumers allowed a new checkpoint when their state's shape changed (names, or true)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `kraftform` lives beside this file

from kraftform.pulumi.program import StackConfig, build

build(StackConfig.from_pulumi(Path(__file__).resolve().parents[1]))  # the directory of Pulumi.yaml
