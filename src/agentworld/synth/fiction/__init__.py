"""Fictional worlds: a world bible (entities, facts, documents) and simulators that answer from it.

Why fiction: an agent trained on a world it cannot have memorised must search; a bible generated once and
held fixed gives every answer a reference (the ledger checks each rendered result against the bible's
facts) and every task a reference answer derived from the bible.
"""
