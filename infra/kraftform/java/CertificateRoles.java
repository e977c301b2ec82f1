package dev.kraftform.registry;

import io.quarkus.security.identity.AuthenticationRequestContext;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.SecurityIdentityAugmentor;
import io.quarkus.security.runtime.QuarkusSecurityIdentity;
import io.smallrye.mutiny.Uni;
import java.util.Set;
import javax.enterprise.context.ApplicationScoped;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Roles from the client certificate kraftform's registry requires (mutual TLS, certificates from the cluster's CA):
 * every such certificate reads ("reader"); those whose common name is one of kraftform.registry.writers may also
 * register, configure and delete ("writer"). The HTTP permissions in the configuration kraftform writes map the
 * request methods to these roles. Apicurio 2.x has no authorization of its own without an OIDC server.
 */
@ApplicationScoped
public class CertificateRoles implements SecurityIdentityAugmentor {

    @ConfigProperty(name = "kraftform.registry.writers")
    Set<String> writers;

    @Override
    public Uni<SecurityIdentity> augment(SecurityIdentity identity, AuthenticationRequestContext context) {
        if (identity.isAnonymous()) {
            return Uni.createFrom().item(identity);
        }
        QuarkusSecurityIdentity.Builder roles = QuarkusSecurityIdentity.builder(identity).addRole("reader");
        String name = commonName(identity.getPrincipal().getName());
        if (name != null && writers.contains(name)) {
            roles.addRole("writer");
        }
        return Uni.createFrom().item(roles.build());
    }

    static String commonName(String distinguishedName) {
        try {
            for (Rdn rdn : new LdapName(distinguishedName).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return rdn.getValue().toString();
                }
            }
        } catch (InvalidNameException e) {
            return null;
        }
        return null;
    }
}
