"""The engine: config + loader, schedule, runner, episode driver, workers, shards, play API."""
