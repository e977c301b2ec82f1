"""The Pulumi program refuses specs that declare Kafka Connect, at their place, until it runs workers: a
declared connector `pulumi up` left out would be a change it silently ignored."""

from __future__ import annotations

import pulumi
import pytest

from kraftform.pulumi.program import load

from ...conftest import SpecsCopy
from ..specset.test_connect import with_connect


def test_specs_with_a_connect_cluster_are_refused_naming_it_and_where_it_is(specs_copy: SpecsCopy) -> None:
    specs = with_connect(specs_copy())
    with pytest.raises(pulumi.RunError) as refused:
        load(specs)
    message = str(refused.value)
    assert "does not run Kafka Connect yet; nothing was deployed" in message
    assert f"{specs / 'connect.yaml'}:5" in message and "Connect cluster 'orders-connect'" in message
    assert load(specs_copy("plain")).connect == ()
