mod database_file;
mod state_links;
