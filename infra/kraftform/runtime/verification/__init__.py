"""The runs behind `kraftform verify`: Kafka's own tools against a cluster, nodes killed and restarted, real
applies killed, and the secret scan. The pure parts (tool output, accounting, spec sets, the report) are in
`kraftform.verify`."""
