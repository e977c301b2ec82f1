"""`kraftform verify`: the profiles' promises measured with tools kraftform did not write.

Pure parts live here (reading Kafka's tools' output, counting what was lost, generating spec sets,
finding secrets in text, the summary table); the runs that start tools, kill nodes and apply specs live
in `kraftform.runtime.verification`.
"""
