"""`kraftform verify`: the profiles' promises measured with tools kraftform did not write.

One package, two halves: pure modules (reading Kafka's tools' output `toolout`, counting what was lost
`delivery`, generating spec sets `specsets` and `mutations`, finding secrets `secretscan`, the summary
table `report`) and the runs that start tools, kill nodes and apply specs (`target`, `durability`,
`performance`, `resilience`, `run`). It sits above `runtime`, whose clusters it runs against.
"""

#: The sections of a run, in order, by the names `--skip` takes.
SECTIONS = ("performance", "delivery", "resilience", "node-work")
