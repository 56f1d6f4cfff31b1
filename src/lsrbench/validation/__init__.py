"""Is this config valid? What the schema cannot say (config), the files it names (files) and the
numbers it reads from other files (ranges): one line each before the first job."""
