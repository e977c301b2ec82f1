"""The Docker engines kraftform runs containers on: one adapter over the Docker SDK for Python (`engine`: clients
for the machine's engine and each spec host's, containers made from specs, files copied in) and the images
built without a registry (`images`)."""
