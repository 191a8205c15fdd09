"""Rule-checked probes of a web-browser world model (``agentworld eval probes``).

Controllability: world facts (the account page shows a balance of $120.00, the server answers HTTP
429, the catalog's page 2 of 3) must show in the page. Error handling: BrowserGym's ``Error:`` line
for a bid that is not on the page, the site's 404 page, the browser's blocked-navigation page. Long
context: an order number shown early is shown again on the orders page after 10, 50 and 100
intervening actions.
"""

from __future__ import annotations

import re

from agentworld.domains.probes import (
    CONTEXT_GAPS,
    Probe,
    contains,
    failure,
    make,
    regex,
    rng,
    system_prompt,
    token,
    with_facts,
)
from agentworld.domains.web import PLUGIN

DOMAIN = "web"
SITE = "http://localhost:8000"


def _action(call: str) -> str:
    return f"**Action:**\n```\n{call}\n```"


def _page(title: str, path: str, *texts: str, error: str = "") -> str:
    url = SITE + path
    nodes = "\n".join(f"\t\t[{15 + i}] paragraph ''\n\t\t\tStaticText '{text}'"
                      for i, text in enumerate(texts))
    head = f"Error: {error}\n\n" if error else ""
    return (f"Tab 0 (current): {title}\nURL: {url}\n{head}\nRootWebArea '{title}', focused, url='{url}'\n"
            f"\t[5] banner ''\n\t\t[7] link 'Home', url='{SITE}/'\n\t[13] main ''\n"
            f"\t\t[14] heading '{title}'\n"
            f"{nodes}")


def _controllability(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "control", n)
        user = token(r, 7)
        out.append(make(DOMAIN, "controllability", "balance", n, with_facts(
            system, [f"The signed-in user is {user}; the account page {SITE}/account shows the balance "
                     "$120.00."]), [], _action(f"goto('{SITE}/account')"),
            _page("Account - Loopback Books", "/account", f"Signed in as {user}", "Balance: $120.00"),
            [regex(r"\$120\.00\b")]))
        query = token(r, 6)
        out.append(make(DOMAIN, "controllability", "http-429", n, with_facts(
            system, [f"The server answers every request to {SITE}/search with HTTP 429 Too Many "
                     "Requests."]), [],
            _action(f"goto('{SITE}/search?q={query}')"),
            _page("429 Too Many Requests", f"/search?q={query}", "429 Too Many Requests",
                  "Rate limit exceeded; retry later."), [regex(r"\b429\b"), regex(r"(?i)too many requests")]))
        titles = [f"{token(r, 6).capitalize()} {token(r, 5).capitalize()}" for _ in range(2)]
        out.append(make(DOMAIN, "controllability", "page-2-of-3", n, with_facts(
            system, [f"The catalog has exactly 3 pages; {SITE}/catalog?page=2 shows page 2 of 3 with the "
                     f"books {titles[0]} and {titles[1]}."]), [], _action(f"goto('{SITE}/catalog?page=2')"),
            _page("Catalog - Loopback Books", "/catalog?page=2", *titles, "Page 2 of 3"),
            [regex(r"(?i)\bpage\s*2\s*(of|/)\s*3\b"), *(contains(t) for t in titles)]))
    return out


def _errors(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "errors", n)
        bid, missing, host = r.randint(300, 999), token(r), f"{token(r)}.example.com"
        home = _page("Welcome - Loopback Books", "/", "Welcome to the shop.")
        history = [(_action(f"goto('{SITE}/')"), home)]
        out.append(make(DOMAIN, "error_handling", "missing-element", n, system, history,
                        _action(f"click('{bid}')"),
                        _page("Welcome - Loopback Books", "/", "Welcome to the shop.",
                              error=f"Could not find element with bid \"{bid}\""),
                        [regex(rf"^Error: .*\b{bid}\b"), contains("Welcome to the shop."),
                         failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "not-found", n, system, [],
                        _action(f"goto('{SITE}/{missing}')"),
                        _page("404 Not Found", f"/{missing}", "404 Not Found",
                              f"The page /{missing} does not exist."),
                        [regex(r"\b404\b"), contains(missing), failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "blocked", n, system, [], _action(f"goto('https://{host}/')"),
                        f"Tab 0 (current): {host}\nURL: chrome-error://chromewebdata/\nError: Page.goto: "
                        f"net::ERR_BLOCKED_BY_CLIENT at https://{host}/\n\nRootWebArea '{host}', focused\n"
                        f"\t[17] heading '{host} is blocked'\n\tStaticText 'ERR_BLOCKED_BY_CLIENT'",
                        [regex(r"net::ERR_BLOCKED_BY_CLIENT"), regex(rf"^Error: .*{re.escape(host)}"),
                         failure(PLUGIN.error_patterns)]))
    return out


def _long_context(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "context", n)
        order = f"LB-{r.randint(100000, 999999)}"
        for gap in CONTEXT_GAPS:
            history = [(_action("click('31')"), _page("Order placed - Loopback Books", "/checkout/done",
                                                      f"Thank you! Your order number is {order}."))]
            history += [(_action(f"goto('{SITE}/catalog?page={i}')"),
                         _page("Catalog - Loopback Books", f"/catalog?page={i}", f"Catalog page {i}"))
                        for i in range(1, gap + 1)]
            out.append(make(DOMAIN, "long_context", "order-recall", n, system, history,
                            _action(f"goto('{SITE}/orders')"),
                            _page("Your orders - Loopback Books", "/orders",
                                  f"Order {order}: 1 item, placed"),
                            [contains(order)], gap=gap))
    return out


def generate(seed: int, variants: int) -> list[Probe]:
    """The web probes of ``seed``: ``variants`` of each template (values drawn per variant)."""
    system = system_prompt(__package__ or "")
    return [*_controllability(seed, variants, system), *_errors(seed, variants, system),
            *_long_context(seed, variants, system)]
