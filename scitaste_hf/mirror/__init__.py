"""The offline mirror: OpenAlex, NASA ADS and arXiv APIs answered from the simulated world (or from recorded
real responses), so that the builder, the agent tools and the demo run over real HTTP without the internet."""
