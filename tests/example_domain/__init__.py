"""The test suite's example domain: a key-value notebook, shown in docs/adding-a-domain.md.

Actions are ``set KEY VALUE``, ``get KEY``, ``del KEY`` and ``list``; observations are ``KEY = VALUE``
lines, ``OK`` or ``(no such key: KEY)``. Nothing outside this package knows it exists: it is found
through ``AGENTWORLD_DOMAIN_PACKAGES=example_domain`` or :func:`agentworld.domains.base.register_domain`.
"""

from agentworld.domains.base import DomainPlugin

PLUGIN = DomainPlugin(
    name="notes",
    display="Notes",
    rules="example_domain.rules:RULES",
    retrieval_keys="example_domain.keys:KEYS",
    environment="example_domain.env:open_environment",
    recorder="example_domain.record:COMMAND",
)
