from yiemagent import Agent
from yiemagent.models.local import SMOLLM2, LocalModel

with LocalModel(model=SMOLLM2) as model:        # or LocalModel(): Gemma 3 270M base
    agent = Agent(model.constrained_llm_call(), mcp_servers=["http://127.0.0.1:8765/mcp"])
    print(agent.ask("What is the weather in Paris?")["content"])
