"""The schema registry kraftform runs (Apicurio Registry): what it is made of (`base`), the container beside a
Docker cluster (`container`), and the JVM beside a local one with the clients either is reached by
(`running`)."""
