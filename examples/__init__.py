"""Example tasks that coordinator actions can run (`task:examples.<name>`)."""
