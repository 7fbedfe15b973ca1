"""The REAPI bot (`mcpp worker`): leases actions through the Bots API and runs them."""
