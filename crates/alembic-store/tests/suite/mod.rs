mod database_file;
